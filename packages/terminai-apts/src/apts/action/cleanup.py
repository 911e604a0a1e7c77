"""Re-export of :mod:`terminai_apts.action.cleanup`; ``python -m apts.action.cleanup`` runs the same CLI."""

import sys

from terminai_apts.action.cleanup import (
    ApplyReport,
    apply_plan,
    cleanup_downloads,
    default_downloads_dir,
    main,
    undo,
)

__all__ = ["ApplyReport", "apply_plan", "cleanup_downloads", "default_downloads_dir", "main", "undo"]

if __name__ == "__main__":
    sys.exit(main())

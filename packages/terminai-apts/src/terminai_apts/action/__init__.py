"""Actions the toolset can plan and, with approval, apply (see ``terminai_apts.action.cleanup``)."""

__all__: list[str] = []

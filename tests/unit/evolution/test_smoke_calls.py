from terminai_apts.evolution.orchestrator import smoke_calls


def test_smoke_calls_only_zero_arg_public_functions() -> None:
    code = "def a():\n    pass\ndef b(x):\n    pass\ndef c(x=1, *, y=2):\n    pass\ndef _d():\n    pass\n"
    assert smoke_calls(code) == ["a", "c"]

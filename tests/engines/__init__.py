"""The engines' own definitions judge the exported files (issue 42 item 4): ``cases`` exports every shipped plan
and a set of hand-built rows to every target and gathers what each engine would be handed; ``parse_vllm`` and
``parse_sglang`` run inside a virtual environment holding the pinned engine (``install``) and parse each command
with the engine's own argument parser and checks; ``tests/test_engines_accept.py`` drives them."""

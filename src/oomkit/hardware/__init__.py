"""Hardware facts: the GPU catalog (``catalog``) and live device queries."""

__all__: list[str] = []

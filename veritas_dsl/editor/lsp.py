"""`ver lsp`: the language server on stdin and stdout. Needs pygls (the ``lsp`` extra)."""

from __future__ import annotations

from veritas_dsl.errors import UserError


def serve() -> None:
    """Serve one client on stdin and stdout until it exits."""
    try:
        from veritas_dsl.editor.server import server
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] not in ("pygls", "lsprotocol"):
            raise
        raise UserError('`ver lsp` needs pygls: pip install "veritas-dsl[lsp]"') from None
    server().start_io()

"""The language server (pygls): diagnostics on open, change (debounced) and save; hover,
completion, go-to-definition and formatting. Every answer comes from :mod:`analysis`, :mod:`hover`
and :mod:`format`; this module only speaks the protocol. Checking runs on one worker thread and
formatting on another, so that neither stalls an answer; a result is published only if no newer
version of the document has arrived meanwhile. Every request gets an answer, an error one when
its params do not fit the protocol's types."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import queue
import threading
from concurrent.futures import Executor, Future

import cattrs
from cattrs.v import format_exception
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, default_converter

from veritas_dsl.diagnostics import Diagnostic, Severity, SpecError
from veritas_dsl.editor import hover as at
from veritas_dsl.editor.analysis import MAX_LIVE_CHARS, Analysis, analyse
from veritas_dsl.editor.cache import CachedFiles
from veritas_dsl.editor.format import format_text

#: Seconds of quiet after a change before the document is checked again.
DEBOUNCE_S = 0.3

_KINDS = {
    "keyword": lsp.CompletionItemKind.Keyword,
    "model": lsp.CompletionItemKind.Class,
    "family": lsp.CompletionItemKind.Class,
    "data": lsp.CompletionItemKind.Module,
    "const": lsp.CompletionItemKind.Constant,
    "query": lsp.CompletionItemKind.Event,
    "feature": lsp.CompletionItemKind.Field,
    "engine": lsp.CompletionItemKind.Value,
    "format": lsp.CompletionItemKind.Unit,
    "function": lsp.CompletionItemKind.Function,
}


#: What `_Protocol.structure_message` gives for a request it has answered already.
_ANSWERED = object()


class _Protocol(LanguageServerProtocol):
    """pygls' protocol, with an error reply where pygls gives none: to a request whose params
    do not fit its method's types (pygls logs the error and drops the request, and the client
    waits for ever), and to a request after `shutdown` (pygls drops those too)."""

    def structure_message(self, data: dict):
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            if "id" not in data or "method" not in data:
                raise  # a notification, or a reply to us: no one waits for an answer
            cause = error.__cause__
            if isinstance(cause, cattrs.ClassValidationError):
                found = cattrs.transform_error(cause, format_exception=_what_is_wrong)
                error = JsonRpcInvalidParams(f"{error.message}: {'; '.join(found)}")
            self._send_response(data["id"], error=error.to_response_error())
            return _ANSWERED

    def handle_message(self, message) -> None:
        if message is _ANSWERED:
            return
        if self._shutdown and getattr(message, "method", lsp.EXIT) != lsp.EXIT:
            if getattr(message, "id", None) is not None:  # a request, not a notification
                refused = JsonRpcInvalidRequest("the server is shutting down")
                self._send_response(message.id, error=refused.to_response_error())
            return
        super().handle_message(message)


def _what_is_wrong(error: BaseException, _type) -> str:
    """A field's fault as cattrs words it, or the protocol's own validator's words."""
    if isinstance(error, ValueError):
        return str(error)  # e.g. "Position.line should be in range [0:2147483647], but was -1"
    return format_exception(error, _type)


def _converter() -> cattrs.Converter:
    """pygls' converter, but a string field takes only a string (cattrs calls ``str`` on any
    value, so a uri of 42 read as the document "42"): a wrong type is InvalidParams."""
    converter = default_converter()
    converter.register_structure_hook(str, _string)
    return converter


def _string(value, _type) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, found {type(value).__name__}")
    return value


class _Worker(Executor):
    """Runs jobs (checks, or formatting) one at a time, in order, on a daemon thread. A check
    still running when the client says `exit` must not keep the process alive: Python joins a
    ThreadPoolExecutor's threads at exit, so `exit` waited for the check to end, however long."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._serve, name=name, daemon=True).start()

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()
        self._jobs.put((future, functools.partial(fn, *args, **kwargs)))
        return future

    def _serve(self) -> None:
        while True:
            future, job = self._jobs.get()
            if not future.set_running_or_notify_cancel():
                continue  # cancelled while it waited: a newer version is on its way
            try:
                future.set_result(job())
            except BaseException as error:
                future.set_exception(error)


class VerServer(LanguageServer):
    """Keeps, per document, the last analysis that parsed (hover and completion read it while
    the text in the editor does not parse) and the pending debounced check."""

    def __init__(self) -> None:
        super().__init__("ver", "0.1.0", protocol_cls=_Protocol, converter_factory=_converter)
        self.files = CachedFiles()
        self.parsed: dict[str, Analysis] = {}
        self.pending: dict[str, asyncio.Task] = {}
        self.worker = _Worker("ver-check")
        # Apart: a check that never ends must not stop formatting.
        self.formatter = _Worker("ver-format")

    async def check(self, uri: str, delay: float) -> None:
        """Check the document after ``delay`` seconds, then publish its diagnostics."""
        await asyncio.sleep(delay)
        document = self.workspace.text_documents.get(uri)
        if document is None:
            return  # never opened (a save alone): only what the editor holds is checked
        version, text = document.version, document.source
        run = functools.partial(analyse, text, document.path, self.files)
        analysis = await asyncio.get_running_loop().run_in_executor(self.worker, run)
        now = self.workspace.text_documents.get(uri)
        if now is None or now.version != version:
            return  # closed, or a newer version is on its way
        if analysis.spec is not None:
            self.parsed[uri] = analysis
        diagnostics = [_diagnostic(d) for d in analysis.diagnostics]
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
        )

    def schedule(self, uri: str, delay: float) -> None:
        previous = self.pending.pop(uri, None)
        if previous is not None:
            previous.cancel()
        self.pending[uri] = asyncio.ensure_future(self.check(uri, delay))


def _diagnostic(d: Diagnostic) -> lsp.Diagnostic:
    span = d.span  # analysis placed every span in the document
    start = lsp.Position(line=span.line - 1, character=span.column - 1)
    end = lsp.Position(line=span.end_line - 1, character=max(span.end_column - 1, 0))
    parts = [d.message] + ([d.label] if d.label else [])
    parts += [f"note: {note}" for note in d.notes] + ([f"help: {d.help}"] if d.help else [])
    severity = lsp.DiagnosticSeverity.Error
    if d.severity == Severity.WARNING:
        severity = lsp.DiagnosticSeverity.Warning
    return lsp.Diagnostic(
        range=lsp.Range(start=start, end=end),
        message="\n".join(parts),
        severity=severity,
        code=d.code,
        source="ver",
    )


def _range(span) -> lsp.Range:
    return lsp.Range(
        start=lsp.Position(line=span.line - 1, character=span.column - 1),
        end=lsp.Position(line=span.end_line - 1, character=span.end_column - 1),
    )


async def _formatting(ls: VerServer, params: lsp.DocumentFormattingParams) -> list[lsp.TextEdit]:
    """The whole document in the canonical layout, formatted off the loop (`ver fmt`'s rules)."""
    document = ls.workspace.text_documents.get(params.text_document.uri)
    if document is None:
        return []  # not open: reading it from disk here could block the loop (a FIFO)
    if len(document.source) > MAX_LIVE_CHARS:
        raise JsonRpcException(
            f"file too large to format in the editor (more than {MAX_LIVE_CHARS:,} "
            "characters); run `ver fmt` on it",
            code=lsp.LSPErrorCodes.RequestFailed,
        )
    run = functools.partial(format_text, document.source, document.path)
    try:  # off the loop, as a check: a long file takes seconds
        formatted = await asyncio.get_running_loop().run_in_executor(ls.formatter, run)
    except SpecError:
        return []  # the diagnostics already say why
    if formatted == document.source:
        return []
    lines = document.source.split("\n")
    whole = lsp.Range(
        start=lsp.Position(line=0, character=0),
        end=lsp.Position(line=len(lines), character=0),
    )
    return [lsp.TextEdit(range=whole, new_text=formatted)]


@functools.cache
def server() -> VerServer:
    """The server, its features registered."""
    ls = VerServer()

    @ls.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: VerServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)

    @ls.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: VerServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, DEBOUNCE_S)

    @ls.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: VerServer, params: lsp.DidSaveTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)  # a model file may have changed too

    @ls.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: VerServer, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.parsed.pop(uri, None)
        pending = ls.pending.pop(uri, None)
        if pending is not None:
            pending.cancel()  # else it would read the closed document from disk
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @ls.feature(lsp.TEXT_DOCUMENT_HOVER)
    def on_hover(ls: VerServer, params: lsp.HoverParams) -> lsp.Hover | None:
        analysis = ls.parsed.get(params.text_document.uri)
        if analysis is None:
            return None
        text = at.hover(analysis, ls.files, params.position.line, params.position.character)
        if text is None:
            return None
        content = lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text)
        return lsp.Hover(contents=content)

    @ls.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=["."]))
    def on_completion(ls: VerServer, params: lsp.CompletionParams) -> lsp.CompletionList:
        analysis = ls.parsed.get(params.text_document.uri)
        if analysis is None:
            return lsp.CompletionList(is_incomplete=False, items=[])
        # The names come from the last version that parsed; the position from the one typed.
        current = ls.workspace.get_text_document(params.text_document.uri).source
        here = dataclasses.replace(analysis, text=current)
        found = at.completions(here, params.position.line, params.position.character)
        items = [
            lsp.CompletionItem(label=c.label, kind=_KINDS[c.kind], detail=c.kind) for c in found
        ]
        return lsp.CompletionList(is_incomplete=False, items=items)

    @ls.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    def on_definition(ls: VerServer, params: lsp.DefinitionParams) -> lsp.Location | None:
        uri = params.text_document.uri
        analysis = ls.parsed.get(uri)
        if analysis is None:
            return None
        span = at.definition(analysis, params.position.line, params.position.character)
        return None if span is None else lsp.Location(uri=uri, range=_range(span))

    ls.feature(lsp.TEXT_DOCUMENT_FORMATTING)(_formatting)
    return ls

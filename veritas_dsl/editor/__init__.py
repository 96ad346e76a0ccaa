"""Editor support for `.ver`: the formatter (`ver fmt`), the language server (`ver lsp`) and the
Pygments lexer (docs/editors.md). It sits beside the command line, above the language."""

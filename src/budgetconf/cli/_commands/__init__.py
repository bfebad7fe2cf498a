"""One module per command, each declaring it as a `Command` named ``COMMAND``.

Every declaration is read when the parser is built, whatever the command
line asks for, so a module here imports only what `main` has already
loaded; the module that carries a command out is imported by its handler,
when that command runs.
"""

"""`moscopt mcp`: moscopt as a Model Context Protocol server over stdio (the `mcp` extra).

Each tool is a thin call into the application layer (`moscopt.app`, `moscopt.exports`,
`moscopt.report`, `moscopt.run.history`), named and argued as the command line's options in
snake case; `train` starts an ordinary run in the background (`moscopt.app.background`). The
`mcp` SDK is imported only here, when the server starts.
"""

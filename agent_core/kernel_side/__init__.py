"""The kernel side of Cellwright: the `%agent` magic (magic.py), the ToolEnvironment that runs the
agent's cells through the kernel's own shell (shell_environment.py) and where this kernel's agent
works (session.py: its notebook, root folder and kernel id). Its settings are the server's
(agent_core.config.configurable). Nothing here is imported until `%load_ext agent_core`."""

"""The kernel side of Cellwright: the `%agent` magic (magic.py), the ToolEnvironment that runs the
agent's cells through the kernel's own shell (shell_environment.py) and the settings it shares with
the server (kernel_settings.py). Nothing here is imported until `%load_ext agent_core`."""

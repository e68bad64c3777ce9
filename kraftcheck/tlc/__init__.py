"""Running TLC: toolchain, configs, the manifest, tool-output parsing and reports."""

"""Running TLC: the toolchain, .cfg files, the manifests, the runner and TLC's output parser.
What the CLI shows of a result (tables, counterexample diagrams) is kraftcheck.tlc."""

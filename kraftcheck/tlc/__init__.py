"""What `kraftcheck tlc` shows of a TLC result: the result table (report) and counterexample
diagrams.  Running TLC (toolchain, configs, manifest, runner, output parser) is kraftcore.tlc."""

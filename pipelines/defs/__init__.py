"""Component instances of the code location: one folder per declared stream, each with a
`defs.yaml` (`dg scaffold defs pipelines.components.JetStreamStream NAME --stream NAME`)."""

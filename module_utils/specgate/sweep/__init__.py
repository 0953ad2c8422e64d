"""spec_sweep: the sweep's report and winners."""

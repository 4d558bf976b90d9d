"""The candidate steps, one module each: a step's pure logic over one query's candidates and
the `CandidateStep` that names it. `pipeline.run.chain` lists them, in order, with when each
applies; everything else (the run's Beam steps, `explain`, eval's funnel, the import contracts,
the steps page) follows that list."""

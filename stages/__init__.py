"""Pure stage logic over one query's candidates, each with the Beam transform that wraps it."""

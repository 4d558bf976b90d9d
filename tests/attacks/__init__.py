"""The second attack's cases, one file per family (issue 15); run alone with
`pytest tests/attacks`."""

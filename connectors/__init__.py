"""Ports to the outside world and their adapters. Imports nothing else of this project."""

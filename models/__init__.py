"""Weights and engines: weight resolution and verification, embedders (more roles follow).

Nothing here imports the rest of the project.
"""

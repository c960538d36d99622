"""The engine: finds files, reads their import statements, resolves them, builds the graph.

It knows nothing of rules. It never imports or executes the code it reads.
"""

"""The torchx benchmark harness: times our torchx against upstream TorchX side by side.

Run it with ``python3 benchmarks/run.py``; see ``benchmarks/README.md``.
"""

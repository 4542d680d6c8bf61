"""Vectors: the vec0 reads and writes (KNN), the gate that says whether vectors may be used, the
query's vector, and re-embedding.
"""

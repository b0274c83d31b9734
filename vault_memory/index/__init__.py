"""The derived index: everything in the index folder, rebuilt from the vault when lost.

The SQLite catalog (catalog, integrity, lexical: notes, chunks, vectors, BM25), the vector store
(vectorstore — the only module that imports chromadb —, storecheck), what a reconcile does
(planner, indexer), the embedders (embedders, intgraph, queryvectors, calibration), the writer
lock and other processes' requests (lock, requests), and the small files beside the catalog
(exactfile, keptout), and finding the index of a vault that moved (moved). The folder's owner,
which opens, sets aside and rebuilds all of this, is vault_memory.indexfolder (it hands out the
search machinery too, so it sits above search/).

May import: the ground modules and vault_memory.vault. Never search, the lifecycle, the
review, memory.py or the edges.
"""

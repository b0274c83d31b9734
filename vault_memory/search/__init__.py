"""Search and ranking: relevance over the index, and the rule that orders it.

Relevance search, BM25 and dense (search: the pool, score and pick stages), a note as a whole
(wholes: its mean vector, the dense side's document evidence), answer windows (windows) and their
vectors written with the index (sentences) or cached beside it (vectorcache), the filters that pick
candidates before ranking (filters), the days a query names (days), what a question asks
(question: how things are or what happened, which names), decay computed at read time from
frontmatter (decay), the pure ranking rule recall and prefetch share (ranking: the order stage), the
record of every number and switch the read path follows (rules), and the narrow `Workspace`
interface the operations above take (workspace).

May import: the ground modules, vault_memory.vault and vault_memory.index. Never the
lifecycle, the review, memory.py or the edges.
"""

"""The memory lifecycle: what an agent does with its memory, over a `Workspace`.

Recall and prefetch (recall, prefetch: ranked with search's rule, rehearsing what was used; what
a block's entry shows of its note: entries),
staging, committing and remembering (staging, conflicts), frontmatter edits, pins, rehearsal
and the episodic log (edits), reading a note (reading), related and recent notes (related,
recent), and names and links: which note a name means (resolve), link syntax and linked
mentions (linking), supersession relations (relations).

May import: the ground modules, vault_memory.vault, vault_memory.index and vault_memory.search.
Never the review, memory.py or the edges.
"""

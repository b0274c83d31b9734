"""The vault and its files: the truth, read and written as Markdown an Obsidian user keeps.

Walking the vault (walk: which files are notes), parsing a note (notefile, markdown: frontmatter,
body, chunks), writing one safely (atomic: never a half-written note, never a person's edit lost),
Obsidian's settings (obsidian), the lines a vault's templates give every note made from them
(templates: scaffolding, not text), the frontmatter fields the memory owns (fields), daily notes
(daily), sync conflict copies (synccopies), who changed a note: git, a sync client or a person
(origin), and the table of every note's names (names).

May import: the ground modules (vault_memory.errors, config, hashing, oscalls, text, records)
and each other. Never the index, search, the lifecycle, the review, memory.py or the edges.
"""

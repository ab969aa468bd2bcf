"""The environment an install writes: its interpreter, what it holds, and the session that
holds it (interrupts, the lock, crash recovery, temporary folders)."""

"""Operations on a Lo-Bug install: the data-dir lock, backup, restore and doctor."""

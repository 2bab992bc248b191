CREATE TABLE `usage_journal_state` (
	`id` integer PRIMARY KEY NOT NULL,
	`folded_seq` integer DEFAULT 0 NOT NULL
);

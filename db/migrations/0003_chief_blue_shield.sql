CREATE TABLE `key_table_version` (
	`id` integer PRIMARY KEY NOT NULL,
	`version` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE `usage_journals` (
	`journal` text PRIMARY KEY NOT NULL,
	`folded_seq` integer DEFAULT 0 NOT NULL
);

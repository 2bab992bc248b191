CREATE TABLE `conversations` (
	`key_id` text NOT NULL,
	`id` text NOT NULL,
	`kind` text NOT NULL,
	`upstream` text,
	`parent_id` text,
	`request` text NOT NULL,
	`answer` text NOT NULL,
	`size` integer NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`continued_by` text,
	`claimed_until` integer,
	PRIMARY KEY(`key_id`, `id`)
);
--> statement-breakpoint
CREATE INDEX `conversations_expires_at` ON `conversations` (`expires_at`);
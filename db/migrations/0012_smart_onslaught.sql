CREATE TABLE `response_cache` (
	`key` text PRIMARY KEY NOT NULL,
	`body` text NOT NULL,
	`usage` text,
	`cost_nanos` integer NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `response_cache_created_at` ON `response_cache` (`created_at`);
ALTER TABLE `usage_daily` ADD `cache_saved_nanos` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `usage_minute` ADD `cache_saved_nanos` integer DEFAULT 0 NOT NULL;
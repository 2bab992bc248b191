ALTER TABLE `alias_targets` ADD `price` text;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `daily_budget_nanos` integer;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `monthly_budget_nanos` integer;--> statement-breakpoint
ALTER TABLE `tiers` ADD `daily_budget_nanos` integer;--> statement-breakpoint
ALTER TABLE `tiers` ADD `monthly_budget_nanos` integer;--> statement-breakpoint
ALTER TABLE `usage_daily` ADD `cost_nanos` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `usage_minute` ADD `cost_nanos` integer DEFAULT 0 NOT NULL;
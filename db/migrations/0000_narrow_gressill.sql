CREATE TABLE `alias_targets` (
	`alias` text NOT NULL,
	`position` integer NOT NULL,
	`upstream` text NOT NULL,
	`model` text NOT NULL,
	`weight` integer NOT NULL,
	PRIMARY KEY(`alias`, `position`),
	FOREIGN KEY (`alias`) REFERENCES `aliases`(`name`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `aliases` (
	`name` text PRIMARY KEY NOT NULL,
	`position` integer NOT NULL,
	`strategy` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `api_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`prefix` text NOT NULL,
	`hash` text NOT NULL,
	`name` text NOT NULL,
	`tier` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer,
	`revoked_at` integer,
	`requests_per_minute` integer,
	`tokens_per_minute` integer,
	`max_concurrent` integer,
	`monthly_token_quota` integer,
	`daily_request_quota` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_prefix_unique` ON `api_keys` (`prefix`);--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_hash_unique` ON `api_keys` (`hash`);--> statement-breakpoint
CREATE TABLE `tiers` (
	`name` text PRIMARY KEY NOT NULL,
	`position` integer NOT NULL,
	`requests_per_minute` integer NOT NULL,
	`tokens_per_minute` integer NOT NULL,
	`max_concurrent` integer NOT NULL,
	`monthly_token_quota` integer,
	`daily_request_quota` integer,
	`models` text
);
--> statement-breakpoint
CREATE TABLE `upstreams` (
	`name` text PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`base_url` text,
	`api_key_env` text,
	`timeout_ms` integer NOT NULL,
	`connect_timeout_ms` integer NOT NULL,
	`max_retries` integer NOT NULL,
	`failure_threshold` integer NOT NULL,
	`cooldown_ms` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `usage_daily` (
	`key_id` text NOT NULL,
	`date` text NOT NULL,
	`alias` text NOT NULL,
	`upstream` text NOT NULL,
	`requests` integer DEFAULT 0 NOT NULL,
	`errors` integer DEFAULT 0 NOT NULL,
	`prompt_tokens` integer DEFAULT 0 NOT NULL,
	`completion_tokens` integer DEFAULT 0 NOT NULL,
	`total_tokens` integer DEFAULT 0 NOT NULL,
	`latency_ms_sum` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`key_id`, `date`, `alias`, `upstream`)
);
--> statement-breakpoint
CREATE INDEX `usage_daily_date` ON `usage_daily` (`date`);
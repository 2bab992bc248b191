CREATE TABLE "alias_targets" (
	"alias" text NOT NULL,
	"position" integer NOT NULL,
	"upstream" text NOT NULL,
	"model" text NOT NULL,
	"weight" integer NOT NULL,
	"price" jsonb,
	CONSTRAINT "alias_targets_alias_position_pk" PRIMARY KEY("alias","position")
);
--> statement-breakpoint
CREATE TABLE "aliases" (
	"name" text PRIMARY KEY NOT NULL,
	"position" integer NOT NULL,
	"strategy" text NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"prefix" text NOT NULL,
	"hash" text NOT NULL,
	"name" text NOT NULL,
	"tier" text NOT NULL,
	"created_at" bigint NOT NULL,
	"expires_at" bigint,
	"revoked_at" bigint,
	"requests_per_minute" bigint,
	"tokens_per_minute" bigint,
	"max_concurrent" bigint,
	"monthly_token_quota" bigint,
	"daily_request_quota" bigint,
	"daily_budget_nanos" bigint,
	"monthly_budget_nanos" bigint,
	CONSTRAINT "api_keys_prefix_unique" UNIQUE("prefix"),
	CONSTRAINT "api_keys_hash_unique" UNIQUE("hash")
);
--> statement-breakpoint
CREATE TABLE "config_state" (
	"id" integer PRIMARY KEY NOT NULL,
	"version" bigint DEFAULT 0 NOT NULL,
	"settings" jsonb
);
--> statement-breakpoint
CREATE TABLE "key_table_version" (
	"id" integer PRIMARY KEY NOT NULL,
	"version" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tiers" (
	"name" text PRIMARY KEY NOT NULL,
	"position" integer NOT NULL,
	"requests_per_minute" bigint NOT NULL,
	"tokens_per_minute" bigint NOT NULL,
	"max_concurrent" bigint NOT NULL,
	"monthly_token_quota" bigint,
	"daily_request_quota" bigint,
	"daily_budget_nanos" bigint,
	"monthly_budget_nanos" bigint,
	"models" jsonb
);
--> statement-breakpoint
CREATE TABLE "upstreams" (
	"name" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"base_url" text,
	"api_key_env" text,
	"timeout_ms" integer NOT NULL,
	"connect_timeout_ms" integer NOT NULL,
	"max_retries" integer NOT NULL,
	"failure_threshold" integer NOT NULL,
	"cooldown_ms" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "usage_daily" (
	"key_id" text NOT NULL,
	"date" text NOT NULL,
	"alias" text NOT NULL,
	"upstream" text NOT NULL,
	"requests" bigint DEFAULT 0 NOT NULL,
	"errors" bigint DEFAULT 0 NOT NULL,
	"prompt_tokens" bigint DEFAULT 0 NOT NULL,
	"completion_tokens" bigint DEFAULT 0 NOT NULL,
	"total_tokens" bigint DEFAULT 0 NOT NULL,
	"cost_nanos" bigint DEFAULT 0 NOT NULL,
	"latency_ms_sum" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "usage_daily_key_id_date_alias_upstream_pk" PRIMARY KEY("key_id","date","alias","upstream")
);
--> statement-breakpoint
CREATE TABLE "usage_journals" (
	"journal" text PRIMARY KEY NOT NULL,
	"folded_seq" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "usage_minute" (
	"minute" bigint NOT NULL,
	"key_id" text NOT NULL,
	"alias" text NOT NULL,
	"upstream" text NOT NULL,
	"requests" bigint DEFAULT 0 NOT NULL,
	"errors" bigint DEFAULT 0 NOT NULL,
	"prompt_tokens" bigint DEFAULT 0 NOT NULL,
	"completion_tokens" bigint DEFAULT 0 NOT NULL,
	"cost_nanos" bigint DEFAULT 0 NOT NULL,
	"latency_ms_sum" bigint DEFAULT 0 NOT NULL,
	"lat_0" bigint DEFAULT 0 NOT NULL,
	"lat_1" bigint DEFAULT 0 NOT NULL,
	"lat_2" bigint DEFAULT 0 NOT NULL,
	"lat_3" bigint DEFAULT 0 NOT NULL,
	"lat_4" bigint DEFAULT 0 NOT NULL,
	"lat_5" bigint DEFAULT 0 NOT NULL,
	"lat_6" bigint DEFAULT 0 NOT NULL,
	"lat_7" bigint DEFAULT 0 NOT NULL,
	"lat_8" bigint DEFAULT 0 NOT NULL,
	"lat_9" bigint DEFAULT 0 NOT NULL,
	"lat_10" bigint DEFAULT 0 NOT NULL,
	"lat_11" bigint DEFAULT 0 NOT NULL,
	"lat_12" bigint DEFAULT 0 NOT NULL,
	"lat_13" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "usage_minute_minute_key_id_alias_upstream_pk" PRIMARY KEY("minute","key_id","alias","upstream")
);
--> statement-breakpoint
ALTER TABLE "alias_targets" ADD CONSTRAINT "alias_targets_alias_aliases_name_fk" FOREIGN KEY ("alias") REFERENCES "public"."aliases"("name") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "usage_daily_date" ON "usage_daily" USING btree ("date");
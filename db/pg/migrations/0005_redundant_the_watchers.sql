ALTER TABLE "usage_daily" ADD COLUMN "cache_saved_nanos" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "usage_minute" ADD COLUMN "cache_saved_nanos" bigint DEFAULT 0 NOT NULL;
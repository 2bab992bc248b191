CREATE TABLE "response_cache" (
	"key" text PRIMARY KEY NOT NULL,
	"body" text NOT NULL,
	"usage" text,
	"cost_nanos" bigint NOT NULL,
	"created_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "response_cache_created_at" ON "response_cache" USING btree ("created_at");
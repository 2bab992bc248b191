CREATE TABLE "request_log" (
	"uid" text PRIMARY KEY NOT NULL,
	"id" text NOT NULL,
	"at" bigint NOT NULL,
	"key_id" text,
	"alias" text,
	"upstream" text,
	"status" integer NOT NULL,
	"error_type" text,
	"record" text NOT NULL
);
--> statement-breakpoint
CREATE INDEX "request_log_at" ON "request_log" USING btree ("at","uid");--> statement-breakpoint
CREATE INDEX "request_log_id" ON "request_log" USING btree ("id");--> statement-breakpoint
CREATE INDEX "request_log_key" ON "request_log" USING btree ("key_id","at");
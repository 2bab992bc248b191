CREATE TABLE "conversations" (
	"key_id" text NOT NULL,
	"id" text NOT NULL,
	"kind" text NOT NULL,
	"upstream" text,
	"parent_id" text,
	"request" text NOT NULL,
	"answer" text NOT NULL,
	"size" bigint NOT NULL,
	"created_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL,
	"continued_by" text,
	"claimed_until" bigint,
	CONSTRAINT "conversations_key_id_id_pk" PRIMARY KEY("key_id","id")
);
--> statement-breakpoint
CREATE INDEX "conversations_expires_at" ON "conversations" USING btree ("expires_at");
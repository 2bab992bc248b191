-- The single journal of earlier versions becomes journal `legacy`; its fold point comes along.
INSERT INTO `usage_journals` (`journal`, `folded_seq`) SELECT 'legacy', `folded_seq` FROM `usage_journal_state` WHERE `id` = 1;
--> statement-breakpoint
INSERT INTO `key_table_version` (`id`, `version`) VALUES (1, 0);

-- Performance (issue 11): PostgreSQL's JIT compiler is off for this database.
--
-- PostgreSQL compiles a statement's expressions to machine code when the planner's cost estimate
-- passes jit_above_cost (100,000 by default). The estimates grow with the tables, so a large
-- backlog or many endpoints push payhooks' hottest statements past it exactly when the system is
-- under load, and compiling then costs 30-100 ms per execution of statements that otherwise run
-- in 1-5 ms (measured: the claim with 3,000 endpoints and 150,000 queued deliveries, 87 ms with
-- JIT, 4 ms without). Nothing payhooks runs is long enough to win it back.
--
-- Set for the database, so it holds for every session, through a connection pooler too; each
-- payhooks connection also sets it itself (db/client.ts) for when this can't be done here: only
-- the database's owner may alter it.
DO $$
BEGIN
  EXECUTE format('ALTER DATABASE %I SET jit = off', current_database());
EXCEPTION WHEN insufficient_privilege THEN
  RAISE NOTICE 'jit = off not set for database % (only its owner may); payhooks connections set it themselves', current_database();
END $$;

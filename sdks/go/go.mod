module github.com/payhooks/payhooks/sdks/go

go 1.19

// Only the tests import a driver (the PostgreSQL store takes your *sql.DB).
require github.com/lib/pq v1.10.7

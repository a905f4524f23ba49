package dev.payhooks.receiver.stores;

/** The crediting work given to creditOnce; {@code tx} is the store's transaction (a JDBC Connection for PostgreSQL, null otherwise). */
@FunctionalInterface
public interface CreditWork<T, X> {
  T run(X tx) throws Exception;
}

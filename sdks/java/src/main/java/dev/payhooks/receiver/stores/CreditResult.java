package dev.payhooks.receiver.stores;

/** The outcome of creditOnce: {@code credited} is true for the one call that ran the work, whose result is {@code value}. */
public record CreditResult<T>(boolean credited, T value) {
  public static <T> CreditResult<T> notCredited() {
    return new CreditResult<>(false, null);
  }
}

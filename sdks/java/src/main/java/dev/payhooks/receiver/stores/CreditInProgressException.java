package dev.payhooks.receiver.stores;

/** creditOnce found another caller crediting the same payment, and it did not finish in time. Nothing was credited: retry later. */
public final class CreditInProgressException extends Exception {
  private static final long serialVersionUID = 1L;

  public CreditInProgressException(String paymentId) {
    super("payment " + paymentId + " is being credited by another caller; try again later");
  }
}

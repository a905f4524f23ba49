/** Management requests are small; anything bigger is refused with a 413 before parsing. */
export const API_BODY_LIMIT = 64 * 1024;

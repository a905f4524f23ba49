import { asc, eq } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { merchants, platforms } from '../db/schema.ts';
import { AppError } from '../errors.ts';

/** What the hosted checkout page shows of the shop: its display name, or the Platform's name. */
export interface ShopSettings {
  object: 'shop_settings';
  /** The name customers see on the hosted checkout page; null shows `platform_name`. */
  display_name: string | null;
  platform_name: string;
}

export const DISPLAY_NAME_MAX = 100;

function validateDisplayName(value: unknown): string | null {
  if (value === null) return null;
  const bad = (message: string) =>
    new AppError('invalid_request', 'parameter_invalid', `Invalid 'display_name': ${message}`, { param: 'display_name' });
  if (typeof value !== 'string') throw bad('send a string, or null for the Platform name.');
  const trimmed = value.trim();
  if ([...trimmed].length > DISPLAY_NAME_MAX) throw bad(`at most ${DISPLAY_NAME_MAX} characters.`);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(trimmed)) throw bad('control characters are not allowed.');
  return trimmed.length ? trimmed : null;
}

/** The Platform's merchant (today each Platform has exactly one: its first). */
async function merchantRow(db: Db, platformId: string) {
  const [row] = await db
    .select({ id: merchants.id, displayName: merchants.displayName, platformName: platforms.name })
    .from(merchants)
    .innerJoin(platforms, eq(platforms.id, merchants.platformId))
    .where(eq(merchants.platformId, platformId))
    .orderBy(asc(merchants.createdAt), asc(merchants.id))
    .limit(1);
  if (!row) throw new AppError('invalid_state', 'merchant_missing', 'This Platform has no merchant; ask the operator to create one.');
  return row;
}

export async function getShopSettings(db: Db, platformId: string): Promise<ShopSettings> {
  const row = await merchantRow(db, platformId);
  return { object: 'shop_settings', display_name: row.displayName, platform_name: row.platformName };
}

export async function setDisplayName(db: Db, platformId: string, value: unknown): Promise<ShopSettings> {
  const displayName = validateDisplayName(value);
  const row = await merchantRow(db, platformId);
  await db.update(merchants).set({ displayName }).where(eq(merchants.id, row.id));
  return { object: 'shop_settings', display_name: displayName, platform_name: row.platformName };
}

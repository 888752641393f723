// The UC pack catalog (docs/reference/redeem.md#categories): a category's name is its UC value as a string.

/** Pack sizes in UC, smallest first. This order is the order of every stock listing. */
export const CATALOG_UC = [60, 325, 660, 1800, 3850, 8100] as const;

export type CatalogUc = (typeof CATALOG_UC)[number];

/** Category names in catalog order: '60', '325', … */
export const CATEGORIES: readonly string[] = CATALOG_UC.map(String);

export function isCategory(name: unknown): name is string {
  return typeof name === 'string' && CATEGORIES.includes(name);
}

/** The UC value of a category; throws for a name that is not in the catalog. */
export function categoryUc(name: string): number {
  if (!isCategory(name)) throw new Error(`unknown stock category: ${JSON.stringify(name)}`);
  return Number(name);
}

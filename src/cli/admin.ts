// Placeholder replaced by the admin CLI (thin client of the admin API).
export async function runAdmin(_args: string[]): Promise<void> {
  throw new Error('admin CLI not built yet');
}

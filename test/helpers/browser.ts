import path from 'node:path';
import type { Page } from 'playwright-core';

/**
 * Keeps a screenshot as the run's evidence. A browser that cannot take one (Chromium's "Unable to capture
 * screenshot" on a loaded machine) costs the picture, not the test: what the test checks is the page's text.
 */
export async function keepScreenshot(page: Page, file: string, options: { fullPage?: boolean } = {}): Promise<void> {
  try {
    await page.screenshot({ path: file, fullPage: options.fullPage ?? false });
  } catch (err) {
    const reason = err instanceof Error ? err.message.split('\n')[0] : String(err);
    console.log(`# screenshot ${path.basename(file)} not kept: ${reason}`);
  }
}

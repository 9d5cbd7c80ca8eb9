// c960 live counters: polls /api/v1/live every 5 s and sets the text of every element with a
// data-live key and the value of every data-bar (a <progress>). The pages are complete without
// this script. It is a file of its own: the pages' Content-Security-Policy runs no inline script.
// Also the explorer's copy buttons: a button[data-copy] copies the field it names, and a
// read-only field[data-select] selects itself on focus.
"use strict";
(function () {
  const PERIOD_MS = 5000;
  const note = () => document.getElementById("live-note");
  async function refresh() {
    try {
      const resp = await fetch("/api/v1/live", { headers: { Accept: "application/json" } });
      if (!resp.ok) throw new Error("HTTP " + resp.status);
      const live = await resp.json();
      document.querySelectorAll("[data-live]").forEach((el) => {
        const text = live.text[el.dataset.live];
        if (text !== undefined && el.textContent !== text) el.textContent = text;
      });
      document.querySelectorAll("[data-bar]").forEach((el) => {
        const pct = live.bars[el.dataset.bar];
        if (pct !== undefined) {
          el.value = pct;
          el.title = pct.toFixed(1) + " %";
        }
      });
      const n = note();
      if (n) {
        n.textContent = "live · updated " + new Date(live.now_ms).toLocaleTimeString();
        n.classList.remove("stale");
      }
    } catch (e) {
      const n = note();
      if (n) {
        n.textContent = "live updates paused (" + e.message + ")";
        n.classList.add("stale");
      }
    }
  }
  function copyButtons() {
    document.querySelectorAll("[data-select]").forEach((el) => {
      el.addEventListener("focus", () => el.select());
    });
    document.querySelectorAll("button[data-copy]").forEach((btn) => {
      btn.addEventListener("click", async () => {
        const field = document.getElementById(btn.dataset.copy);
        if (!field) return;
        field.select();
        try {
          await navigator.clipboard.writeText(field.value);
        } catch (e) {
          // Without the clipboard API (plain http), the selected text is copied the old way.
          document.execCommand("copy");
        }
        btn.textContent = "Copied";
        btn.classList.add("done");
      });
    });
  }
  document.addEventListener("DOMContentLoaded", () => {
    copyButtons();
    if (!document.body.dataset.poll) return;
    const n = note();
    if (n) n.textContent = "live";
    setInterval(refresh, Number(document.body.dataset.poll) || PERIOD_MS);
  });
})();

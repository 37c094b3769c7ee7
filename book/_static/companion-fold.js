// Images in a folded block load when it is unfolded, and images further down a page when the reader
// scrolls within 1,500 px of them (book/_ext/companion_book.py moved their src to data-src); all of them
// before printing.
(function () {
  function show(img) {
    if (!img.hasAttribute("data-src")) return;
    img.src = img.getAttribute("data-src");
    img.removeAttribute("data-src");
  }
  function load(root) { root.querySelectorAll("img[data-src]").forEach(show); }
  document.addEventListener("toggle", function (e) {
    if (e.target && e.target.tagName === "DETAILS" && e.target.open) load(e.target);
  }, true);
  window.addEventListener("beforeprint", function () { load(document); });
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("details[open]").forEach(load);
    const lazy = Array.from(document.querySelectorAll("img.companion-lazy[data-src]"));
    if (!("IntersectionObserver" in window)) { lazy.forEach(show); return; }
    const seen = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) { if (e.isIntersecting) { show(e.target); seen.unobserve(e.target); } });
    }, {rootMargin: "1500px 0px"});
    lazy.forEach(function (img) { if (!img.closest("details:not([open])")) seen.observe(img); });
  });
})();

// Images in a folded block load when it is unfolded (book/_ext/companion_book.py moved their src to
// data-src), and all of them before printing.
(function () {
  function load(root) {
    root.querySelectorAll("img[data-src]").forEach(function (img) {
      img.src = img.getAttribute("data-src");
      img.removeAttribute("data-src");
    });
  }
  document.addEventListener("toggle", function (e) {
    if (e.target && e.target.tagName === "DETAILS" && e.target.open) load(e.target);
  }, true);
  window.addEventListener("beforeprint", function () { load(document); });
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("details[open]").forEach(load);
  });
})();

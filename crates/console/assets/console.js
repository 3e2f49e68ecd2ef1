// sqs-waiter console: confirmations before a change, "select all" for parked jobs, and an
// optional refresh. Every page works without this script.
document.addEventListener("submit", (event) => {
  const question = event.target.getAttribute("data-confirm");
  if (question && !window.confirm(question)) event.preventDefault();
});
document.addEventListener("change", (event) => {
  if (event.target.id !== "select-all") return;
  for (const box of document.querySelectorAll("input[name=job_id]")) box.checked = event.target.checked;
});
const refresh = document.getElementById("refresh");
if (refresh) {
  refresh.checked = sessionStorage.getItem("refresh") === "on";
  refresh.addEventListener("change", () => sessionStorage.setItem("refresh", refresh.checked ? "on" : "off"));
  setInterval(() => { if (refresh.checked) window.location.reload(); }, 10000);
}

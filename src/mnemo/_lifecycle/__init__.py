"""Write-time decision rules over pairs of statements (merge, supersede, link), pure functions."""
